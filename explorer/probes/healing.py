"""The lab's live heal: convert, record, train for about a minute, measure, and keep the result on disk.

No Streamlit here: explorer.lab.computed runs heal_live in a thread of its own, one heal at a time for the whole server,
and the page reads the HealProgress it fills in as it goes. A heal asked to stop (its owner pressed Stop, or left)
ends at its next step or phase with HealStopped, and frees the server.
"""

from __future__ import annotations

import hashlib
import json
import logging
import math
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field, fields
from functools import lru_cache
from pathlib import Path

import torch

from attn_core.pretrained import Calibration, PretrainedLM, cache_root, heal
from explorer.probes import lab

LIVE_SECONDS = 60.0  # of training: a class waits a minute
LIVE_TRAIN_TOKENS = 2048  # right after the evaluation tokens, disjoint from them and from calibration
LIVE_EVAL_TOKENS = lab.WINDOW  # the first evaluation window: scored before and after in seconds, not minutes
LIVE_LR = 1.0e-3  # the stored table's layer-wise recipe (benchmarks/heal.py)
LIVE_SEED = 0
PHASES = ("converting", "recording", "training", "measuring", "done", "failed", "stopped")
ENDED = ("done", "failed", "stopped")

_log = logging.getLogger(__name__)


@dataclass
class HealProgress:
    """A live heal as it goes, written by its thread and read by any session's page (append-only lists)."""

    key: str
    phase: str = "waiting"
    step_losses: list[float] = field(default_factory=list)  # mean relative error over layers, per step
    first_loss: float | None = None  # before any step
    seconds: float = 0.0  # of training so far
    total_seconds: float = 0.0  # converting, scoring, recording, training and scoring again: what a class waits
    budget_seconds: float = LIVE_SECONDS
    tokens: int = 0
    train_tokens: int = LIVE_TRAIN_TOKENS
    eval_tokens: int = LIVE_EVAL_TOKENS
    perplexity_original: float | None = None
    perplexity_before: float | None = None
    perplexity_after: float | None = None
    from_disk: bool = False
    error: str | None = None  # what failed, as the server reports it (a type and its message, in English)
    model_missing: bool = False  # failed because the trained model is not installed: the page says so in its words
    stopped_by: str | None = None  # "owner" (pressed Stop) or "left" (the session that started it ended)
    score_seconds: float | None = None  # scoring the conversion before healing: what scoring it after will take
    ends_at: float | None = None  # time.monotonic() when the server is expected to be free, revised at each phase

    @property
    def running(self) -> bool:
        return self.phase not in ENDED

    def seconds_left(self, now: float | None = None) -> float | None:
        """About how long until this heal frees the server (None before it can tell: while converting)."""
        if not self.running or self.ends_at is None:
            return None if self.running else 0.0
        return max(self.ends_at - (time.monotonic() if now is None else now), 0.0)

    @property
    def gap_closed(self) -> float | None:
        """The share of the log-perplexity gap to the original that healing closed."""
        before, after, original = self.perplexity_before, self.perplexity_after, self.perplexity_original
        if before is None or after is None or original is None or before <= original:
            return None
        return (math.log(before) - math.log(after)) / (math.log(before) - math.log(original))


def recipe(point: lab.LabPoint, seconds: float) -> dict:
    """What a stored heal was made with: a different recipe is a different file."""
    return {
        "point": point.key,
        "options": point.options,
        "seconds": seconds,
        "train_tokens": LIVE_TRAIN_TOKENS,
        "eval_tokens": LIVE_EVAL_TOKENS,
        "lr": LIVE_LR,
        "seed": LIVE_SEED,
        "text_sha256": lab.REFERENCE_TEXT_SHA256,
    }


def stored_path(point: lab.LabPoint, seconds: float, root: Path | None = None) -> Path:
    digest = hashlib.sha256(json.dumps(recipe(point, seconds), sort_keys=True).encode()).hexdigest()[:16]
    return (root or cache_root()) / "healed" / f"{point.key}-{digest}.pt"


class HealStopped(Exception):
    """A live heal asked to stop: it ends without a result, and nothing is stored."""


def heal_live(
    lm: PretrainedLM,
    point: lab.LabPoint,
    calibration: Calibration | None,
    progress: HealProgress,
    *,
    seconds: float = LIVE_SECONDS,
    root: Path | None = None,
    should_stop: Callable[[], str | None] = lambda: None,
) -> PretrainedLM:
    """The conversion of lm at point, healed for `seconds` (or read back from disk when that recipe was run before),
    with progress filled in as it goes. should_stop() returns why to stop ("owner", "left") or None; it is asked
    between phases and after every training step, and a reason ends the heal with HealStopped."""

    def check() -> None:
        reason = should_stop()
        if reason is not None:
            progress.stopped_by = reason
            raise HealStopped(reason)

    torch.set_num_threads(1)  # as every session's thread: the result's last bits do not depend on the machine
    check()  # stopped while it waited for the model or its calibration
    progress.budget_seconds = seconds
    begun = time.perf_counter()
    ids = lab.reference_ids(lm)
    eval_ids, train_ids = list(ids[:LIVE_EVAL_TOKENS]), list(ids[lab.EVAL_TOKENS : lab.EVAL_TOKENS + LIVE_TRAIN_TOKENS])
    progress.train_tokens, progress.eval_tokens = len(train_ids), len(eval_ids)  # what is scored and trained on
    progress.phase = "converting"
    student = lab.convert_point(lm, point, calibration)
    path = stored_path(point, seconds, root)
    stored = _read_stored(path, student)
    if stored is not None:
        return _restored(student, stored, progress)
    check()
    _score_before(lm, student, eval_ids, len(train_ids), seconds, progress)
    check()
    progress.phase = "recording"

    def record(step: int, losses: list[float], trained: float) -> None:
        if progress.phase != "training":
            progress.phase = "training"
            progress.ends_at = _ends_at_first_step(progress, seconds)
        progress.step_losses.append(sum(losses) / len(losses))
        # heal's own training clock, as its report's (the teacher's recording is off it): the progress line and the
        # final line count the same seconds
        progress.seconds = trained
        check()  # raised through heal(), which stops the weights learning as it leaves

    report = heal(student, lm, lm.decode(train_ids), seconds=seconds, lr=LIVE_LR, seed=LIVE_SEED, on_step=record)
    progress.first_loss = sum(report.initial_losses) / len(report.initial_losses)
    progress.seconds, progress.tokens = report.seconds, report.tokens
    check()
    progress.phase = "measuring"
    progress.ends_at = time.monotonic() + (progress.score_seconds or 0.0)
    progress.perplexity_after = _perplexity(student, eval_ids)
    progress.total_seconds = time.perf_counter() - begun
    _store(path, student, progress)
    progress.phase = "done"
    return student


def _ends_at_first_step(progress: HealProgress, seconds: float) -> float:
    """When a heal that has just taken its first step frees the server: its training budget, the scoring after, and
    the windows still to record (heal records each window of 512 tokens, its default, off the training clock when a
    step first takes it, about a scoring's time each; the first step recorded the first window and its own)."""
    left = max(math.ceil(progress.train_tokens / lab.WINDOW) - 2, 0)
    return time.monotonic() + seconds + (progress.score_seconds or 0.0) * (1 + left)


def _restored(student: PretrainedLM, stored: dict, progress: HealProgress) -> PretrainedLM:
    for layer, state in zip(student.decoder_layers, stored["layers"], strict=True):
        # assign: the loaded tensors become the layer's own; copying into them would write into any tensor the
        # conversion shares with the original model (its memory-mapped weights)
        layer.self_attn.load_state_dict(state, assign=True)
    for name, value in stored["progress"].items():
        setattr(progress, name, value)
    progress.from_disk = True
    progress.phase = "done"
    return student


def _score_before(
    lm: PretrainedLM,
    student: PretrainedLM,
    eval_ids: list[int],
    train_tokens: int,
    seconds: float,
    progress: HealProgress,
) -> None:
    progress.perplexity_original = _original_perplexity(lm, tuple(eval_ids))
    scoring = time.monotonic()
    progress.perplexity_before = _perplexity(student, eval_ids)
    progress.score_seconds = time.monotonic() - scoring
    # recording runs the original over the training tokens: about the scoring's time per token
    recording = progress.score_seconds * train_tokens / len(eval_ids)
    progress.ends_at = time.monotonic() + recording + seconds + progress.score_seconds


def _store(path: Path, student: PretrainedLM, progress: HealProgress) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    saved = {name: value for name, value in asdict(progress).items() if name in _STORED_FIELDS}
    partial = path.with_suffix(".partial")
    torch.save(
        {"layers": [layer.self_attn.state_dict() for layer in student.decoder_layers], "progress": saved}, partial
    )
    partial.replace(path)  # whole or absent: a second server never reads half a file


_STORED_FIELDS = {f.name for f in fields(HealProgress)} - {
    "phase",
    "key",
    "error",
    "model_missing",
    "stopped_by",
    "score_seconds",
    "ends_at",
}


def _read_stored(path: Path, student: PretrainedLM) -> dict | None:
    """The heal stored at path, if there is one, whole, and made for student's layers (names, shapes, dtypes); else
    None, and the caller heals again and rewrites it. Checked in full before any layer takes a tensor from it, so a
    bad file never leaves the student half loaded."""
    if not path.exists():
        return None
    try:
        stored = torch.load(path, weights_only=True)
        layers, saved = stored["layers"], stored["progress"]
        own = [layer.self_attn.state_dict() for layer in student.decoder_layers]
        if len(layers) != len(own) or not set(saved) <= _STORED_FIELDS:
            raise ValueError(f"{len(layers)} layers, fields {sorted(saved)}")
        for state, mine in zip(layers, own, strict=True):
            if state.keys() != mine.keys() or any(
                state[name].shape != mine[name].shape or state[name].dtype != mine[name].dtype for name in mine
            ):
                raise ValueError("its tensors do not fit this conversion's layers")
    except Exception as error:  # unreadable in any way (cut short, not a torch file, another layout): heal again
        _log.warning("ignoring the stored heal %s (%s: %s); healing again", path, type(error).__name__, error)
        return None
    return stored


@torch.inference_mode()
def _perplexity(model: PretrainedLM, ids: list[int]) -> float:
    return lab.perplexity_of(lab.window_nll_sums(model, ids))


@lru_cache(maxsize=1)  # the server's one model
def _original_perplexity(lm: PretrainedLM, eval_ids: tuple[int, ...]) -> float:
    """The original's perplexity, the same for every heal of every point (healing never writes the original): scored
    by the server's first heal, not again by each one after it."""
    return _perplexity(lm, list(eval_ids))
