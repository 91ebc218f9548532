"""Heal a converted model: train what the conversion produced (its attention projections) to reproduce the model it
was converted from, layer by layer, on the teacher's own activations.

    from attn_core.pretrained import convert_attention, heal, load_pretrained
    lm = load_pretrained()
    mla = convert_attention(lm, "mla", kv_lora_rank=128, qk_rope_head_dim=32, calibration=cal).model
    report = heal(mla, lm, train_text, seconds=120, seed=0)  # or steps=N; on_step=callback(step, losses, seconds)
    report.steps, report.tokens, report.seconds, report.losses   # losses: per step, one per layer

Each converted attention layer learns, independently of the others, to give the teacher layer's attention output on the
teacher layer's attention input (after its RMSNorm): both are recorded once from the teacher running over the training
text, in windows (each one the first time a step takes it), and a step feeds every layer the same window
and takes one Adam step on the sum of the layers' relative squared errors (|out - target|² / |target|²; the layers share
no weights, so each one's gradient is its own loss's). Only the student's attention projections learn; its embeddings,
norms and MLPs are the teacher's, shared and frozen. The teacher is never written to: a projection the student shares
with it (MLA's o_proj is the teacher's own tensor after conversion, and the teacher's weights are a memory-mapped file)
is cloned first, and so is every trained projection, so the healed model owns what it learnt.

A layer that already reproduces its teacher to float32 rounding (relative squared error below EXACT_LOSS, e.g. every
layer of the MHA conversion) is left as it is: Adam divides each step by the gradient's own scale, so rounding noise
alone would move its weights by about lr per step.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from functools import partial
from typing import Any

import torch
from torch import nn

from ..grouped import GroupedQueryAttention
from ..latent import MultiHeadLatentAttention
from .model import PretrainedLM

# Relative squared error under which a layer counts as exact already (float32 rounding leaves ~1e-13 on an exact
# conversion; the lossy conversions start at 1e-3 and above).
EXACT_LOSS = 1.0e-10
SCHEDULES = ("cosine", "constant")
# Adam moves every parameter by about lr a step whatever its scale: a sink logit of a few units would need hundreds of
# times the steps of projection weights of a few hundredths, so it learns at this multiple of lr.
SINK_LR_SCALE = 100.0
# What learns in each kind of converted layer: its projections (MLA's latent norm is a constant scale, kept so).
TRAINED = {
    GroupedQueryAttention: ("q_proj", "k_proj", "v_proj", "o_proj"),
    MultiHeadLatentAttention: ("q_proj", "q_a_proj", "q_b_proj", "kv_a_proj_with_mqa", "kv_b_proj", "o_proj"),
}


@dataclass
class HealReport:
    """What one heal() did. losses[i][l]: layer l's relative squared error on step i's window, before that step's
    update (a layer left exact repeats its first loss)."""

    steps: int
    tokens: int  # tokens fed to the layers over all steps (a token seen in two epochs counts twice)
    text_tokens: int  # distinct training tokens (after max_tokens)
    seconds: float  # training only
    capture_seconds: float  # the teacher's passes that record every layer's input and output, on the windows taken
    losses: list[list[float]]
    initial_losses: list[float]  # per layer, on the first window, before any update
    frozen_layers: list[int]  # layers already exact, left untrained
    recipe: dict[str, Any] = field(default_factory=dict)  # lr, schedule, window, seed, steps or seconds asked for

    @property
    def mean_losses(self) -> list[float]:
        """The mean over layers, per step."""
        return [sum(step) / len(step) for step in self.losses]


def heal(
    student: PretrainedLM,
    teacher: PretrainedLM,
    text: str,
    *,
    steps: int | None = None,
    seconds: float | None = None,
    lr: float = 3.0e-4,
    schedule: str = "cosine",
    window: int = 512,
    max_tokens: int | None = None,
    seed: int = 0,
    on_step: Callable[[int, list[float], float], None] | None = None,
) -> HealReport:
    """Train student's converted attention layers on text, in place, to reproduce teacher's attention layer by layer.

    steps: optimizer steps (one window of `window` tokens each, windows shuffled per epoch by `seed`); the same seed
    and steps give the same weights. seconds: a time budget for training (the teacher's recording pass not counted),
    stopping after the step that reaches it; with both, whichever comes first. schedule "cosine" decays lr to 0
    over the steps asked for (or over the seconds, when only they are given); "constant" keeps it.
    on_step(step, losses, seconds) is called after every step with that step's per-layer losses (step counts from 1)
    and the seconds of training so far, on the budget's clock (the report's seconds at the end)."""
    _check(student, teacher, steps, seconds, lr, schedule, window)
    ids = _training_ids(teacher, text, max_tokens)
    windows = _windows(ids, window)
    recording = _Recording(teacher, windows)
    learner = _learner(student, teacher, *recording.window(0))
    report = HealReport(
        steps=0,
        tokens=0,
        text_tokens=len(ids),
        seconds=0.0,
        capture_seconds=0.0,
        losses=[],
        initial_losses=learner.initial,
        frozen_layers=learner.frozen,
        recipe={"lr": lr, "schedule": schedule, "window": window, "seed": seed, "steps": steps, "seconds": seconds},
    )
    _train(
        partial(_layerwise_step, learner, recording),
        [len(chunk) for chunk in windows],
        learner.parameters,
        report,
        budget=_Budget(steps, seconds),
        lr=lr,
        schedule=schedule,
        seed=seed,
        on_step=on_step,
        prepare=recording.window,
    )
    report.capture_seconds = recording.seconds
    return report


def heal_end_to_end(
    student: PretrainedLM,
    teacher: PretrainedLM,
    text: str,
    *,
    steps: int | None = None,
    seconds: float | None = None,
    lr: float = 1.0e-4,
    schedule: str = "cosine",
    window: int = 512,
    max_tokens: int | None = None,
    seed: int = 0,
    on_step: Callable[[int, list[float], float], None] | None = None,
) -> HealReport:
    """Healing's second stage: train student's attention projections, through the whole model, so that its
    next-token distribution matches teacher's (KL(teacher || student) averaged over the window's positions).

    heal() makes every layer reproduce its teacher on the teacher's inputs; the errors it leaves add up through the
    layers, which a layer-wise loss cannot see. Here the loss is the model's output, so the layers learn to make up
    for each other. Everything else is as in heal(): the same arguments, the same seed shuffling the windows, only
    the attention projections learn (the student's own copies), the teacher is never written. The report's losses
    hold one value per step (the KL before that step's update), its initial_losses the first of them. A student that
    already gives the teacher's distribution (KL under EXACT_LOSS on the first window, e.g. the MHA conversion) is
    left as it is, as heal() leaves an exact layer: its frozen_layers are then all the layers."""
    _check(student, teacher, steps, seconds, lr, schedule, window)
    ids = _training_ids(teacher, text, max_tokens)
    windows = [torch.tensor([chunk]) for chunk in _windows(ids, window)]
    parameters = [p for layer in student.decoder_layers for p in _own_trainable(layer.self_attn, teacher)]
    report = HealReport(
        steps=0,
        tokens=0,
        text_tokens=len(ids),
        seconds=0.0,
        capture_seconds=0.0,
        losses=[],
        initial_losses=[],
        frozen_layers=[],
        recipe={"lr": lr, "schedule": schedule, "window": window, "seed": seed, "steps": steps, "seconds": seconds},
    )
    first = next(_window_order(len(windows), seed))  # _train's first
    report.initial_losses = [_distribution_step(student, teacher, windows[first], None, lr)]
    exact = report.initial_losses[0] < EXACT_LOSS
    report.frozen_layers = list(range(len(student.decoder_layers))) if exact else []

    def step(chunk: int, step_lr: float, optimizer: torch.optim.Optimizer | None) -> list[float]:
        return [_distribution_step(student, teacher, windows[chunk], optimizer, step_lr)]

    _train(
        step,
        [chunk.shape[1] for chunk in windows],
        parameters,
        report,
        budget=_Budget(steps, seconds),
        lr=lr,
        schedule=schedule,
        seed=seed,
        on_step=on_step,
        frozen_losses=report.initial_losses if exact else None,
    )
    return report


def _distribution_step(
    student: PretrainedLM, teacher: PretrainedLM, ids: torch.Tensor, optimizer: torch.optim.Optimizer | None, lr: float
) -> float:
    """One window through teacher and student, one Adam step on KL(teacher || student) (none without an
    optimizer); the KL before the step."""
    with torch.inference_mode():
        wanted = torch.log_softmax(teacher(ids)[0][0], dim=-1)
    with torch.inference_mode(False):
        wanted = wanted.clone()  # an inference tensor cannot enter autograd
        with torch.set_grad_enabled(optimizer is not None):
            got = torch.log_softmax(student(ids)[0][0], dim=-1)
            loss = torch.nn.functional.kl_div(got, wanted, log_target=True, reduction="batchmean")
        if optimizer is not None:
            for group in optimizer.param_groups:
                group["lr"] = lr * group["lr_scale"]
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            optimizer.step()
    return float(loss.detach())


def _training_ids(teacher: PretrainedLM, text: str, max_tokens: int | None) -> list[int]:
    """The text's tokens (its first max_tokens), at least two."""
    if not isinstance(text, str):
        raise TypeError(f"text must be a str, not {type(text).__name__}.")
    ids = teacher.encode(text)
    if max_tokens is not None:
        ids = ids[:max_tokens]
    if len(ids) < 2:
        raise ValueError("healing needs a training text of at least two tokens.")
    return ids


@dataclass
class _Learner:
    """The student's attention layers as heal trains them: each one's loss on the first window before any update,
    the layers already exact (left as they are), the others, and the weights these learn (the student's own)."""

    layers: list[nn.Module]
    initial: list[float]
    frozen: list[int]
    trained: list[int]
    parameters: list[nn.Parameter]


def _learner(student: PretrainedLM, teacher: PretrainedLM, x: torch.Tensor, y: torch.Tensor) -> _Learner:
    layers: list[nn.Module] = [layer.self_attn for layer in student.decoder_layers]
    initial = _losses(layers, x, y, grad=False)
    frozen = [index for index, loss in enumerate(initial) if loss < EXACT_LOSS]
    trained = [index for index in range(len(layers)) if index not in frozen]
    parameters = [p for index in trained for p in _own_trainable(layers[index], teacher)]
    return _Learner(layers, initial, frozen, trained, parameters)


@dataclass(frozen=True)
class _Budget:
    """heal's budget: optimizer steps, seconds of training, or both (whichever runs out first)."""

    steps: int | None
    seconds: float | None

    def spent(self, done: int, elapsed: float) -> bool:
        return (self.steps is not None and done >= self.steps) or (self.seconds is not None and elapsed >= self.seconds)

    def progress(self, done: int, elapsed: float) -> float:
        """How far training is, 0 to 1: by steps when they are given, else by time."""
        return done / self.steps if self.steps is not None else elapsed / (self.seconds or 1.0)


def _step_lr(lr: float, schedule: str, progress: float) -> float:
    """The learning rate at `progress`: "cosine" decays it from lr to 0 over the budget, "constant" keeps it."""
    return lr * (0.5 * (1.0 + math.cos(math.pi * min(progress, 1.0))) if schedule == "cosine" else 1.0)


def _train(
    step: Callable[[int, float, torch.optim.Optimizer | None], list[float]],
    window_tokens: list[int],
    parameters: list[nn.Parameter],
    report: HealReport,
    *,
    budget: _Budget,
    lr: float,
    schedule: str,
    seed: int,
    on_step: Callable[[int, list[float], float], None] | None,
    frozen_losses: list[float] | None = None,
    prepare: Callable[[int], object] | None = None,
) -> None:
    """Steps until the budget is spent, step(window, lr, optimizer) on the next window (of window_tokens tokens) of a
    shuffle per epoch (by seed), into the report. With frozen_losses (nothing to train) no step runs and each one repeats those losses.
    prepare(window), when given, runs before each step off the training clock (heal records the teacher there).
    However it ends, the weights stop learning and the report has the training's seconds."""
    optimizer = None
    if parameters and frozen_losses is None:
        sinks = [p for p in parameters if getattr(p, "is_sink_logit", False)]
        rest = [p for p in parameters if not getattr(p, "is_sink_logit", False)]
        groups = [{"params": rest, "lr_scale": 1.0}, {"params": sinks, "lr_scale": SINK_LR_SCALE}]
        optimizer = torch.optim.Adam([group for group in groups if group["params"]], lr=lr)
    order = _window_order(len(window_tokens), seed)
    started = time.perf_counter()
    paused = 0.0  # seconds in prepare
    try:
        while True:
            elapsed = time.perf_counter() - started - paused
            if budget.spent(report.steps, elapsed):
                break
            chunk = next(order)
            if prepare is not None:
                preparing = time.perf_counter()
                prepare(chunk)
                paused += time.perf_counter() - preparing
            step_lr = _step_lr(lr, schedule, budget.progress(report.steps, elapsed))
            losses = list(frozen_losses) if optimizer is None and frozen_losses else step(chunk, step_lr, optimizer)
            report.steps += 1
            report.tokens += window_tokens[chunk]
            report.losses.append(losses)
            if on_step is not None:
                on_step(report.steps, losses, time.perf_counter() - started - paused)
    finally:
        for parameter in parameters:
            parameter.requires_grad_(False)
        report.seconds = time.perf_counter() - started - paused


def _check(
    student: Any, teacher: Any, steps: int | None, seconds: float | None, lr: float, schedule: str, window: int
) -> None:
    for name, model in (("student", student), ("teacher", teacher)):
        if not isinstance(model, PretrainedLM):
            raise TypeError(f"{name} must be a PretrainedLM, not {type(model).__name__}.")
    if student is teacher:
        raise ValueError("the student must be a conversion of the teacher (convert_attention(teacher, ...)).")
    shared = student.embed_tokens is teacher.embed_tokens and all(
        mine.mlp is theirs.mlp and mine.input_layernorm is theirs.input_layernorm
        for mine, theirs in zip(student.decoder_layers, teacher.decoder_layers, strict=False)
    )
    if not shared or len(student.decoder_layers) != len(teacher.decoder_layers):
        raise ValueError(
            "the student is not a conversion of this teacher: its embeddings, norms and MLPs must be the teacher's "
            "(convert_attention(teacher, ...) shares them)."
        )
    for layer in student.decoder_layers:
        if type(layer.self_attn) not in TRAINED:
            raise TypeError(f"cannot heal attention layers of type {type(layer.self_attn).__name__}.")
    if steps is None and seconds is None:
        raise ValueError("give a budget: steps=N optimizer steps, or seconds=S of training.")
    if steps is not None and (isinstance(steps, bool) or not isinstance(steps, int)):
        raise TypeError(f"steps must be an int, not {type(steps).__name__}.")
    if steps is not None and steps < 1:
        raise ValueError(f"steps={steps}: at least 1.")
    if seconds is not None and not seconds > 0:
        raise ValueError(f"seconds={seconds}: a positive budget.")
    if not lr > 0:
        raise ValueError(f"lr={lr}: a positive learning rate.")
    if schedule not in SCHEDULES:
        raise ValueError(f"schedule={schedule!r}: choose one of {', '.join(SCHEDULES)}.")
    if window < 2:
        raise ValueError(f"window={window}: at least 2 tokens.")


def _windows(ids: list[int], window: int) -> list[list[int]]:
    """The training windows: consecutive `window` tokens of ids, the last one shorter (dropped under two tokens)."""
    return [ids[start : start + window] for start in range(0, len(ids), window) if len(ids[start : start + window]) > 1]


def _window_order(windows: int, seed: int) -> Iterator[int]:
    """The order training takes the windows in: a new shuffle each epoch, by seed."""
    generator = torch.Generator().manual_seed(seed)
    while True:
        yield from torch.randperm(windows, generator=generator).tolist()


class _Recording:
    """The teacher's attention inputs and outputs per window, each window recorded the first time it is asked for: a
    heal that ends early (a step budget shorter than an epoch, a stored recipe's first steps, a Stop) runs the
    teacher over the windows it took, not over the whole text, and its first step comes after one or two windows'
    recording rather than all of them."""

    def __init__(self, teacher: PretrainedLM, windows: list[list[int]]):
        self.teacher, self.windows = teacher, windows
        self.recorded: dict[int, tuple[torch.Tensor, torch.Tensor]] = {}
        self.seconds = 0.0

    def window(self, index: int) -> tuple[torch.Tensor, torch.Tensor]:
        """Window `index`'s every layer's attention input (after its RMSNorm) and output, each [n_layers, L, d]."""
        if index not in self.recorded:
            started = time.perf_counter()
            self.recorded[index] = _record(self.teacher, self.windows[index])
            self.seconds += time.perf_counter() - started
        return self.recorded[index]


@torch.inference_mode()
def _record(teacher: PretrainedLM, ids: list[int]) -> tuple[torch.Tensor, torch.Tensor]:
    """One window's every layer's attention input (after its RMSNorm) and output, stacked [n_layers, L, d]."""
    inputs: list[torch.Tensor] = []
    outputs: list[torch.Tensor] = []
    handles = []
    for layer in teacher.decoder_layers:

        def keep(_module: nn.Module, args: tuple[Any, ...], result: tuple[torch.Tensor, Any]) -> None:
            inputs.append(args[0][0].clone())
            outputs.append(result[0][0].clone())  # clone: the decoder adds the residual into it in place

        handles.append(layer.self_attn.register_forward_hook(keep))
    try:
        teacher.hidden_states(torch.tensor([ids]))
    finally:
        for handle in handles:
            handle.remove()
    # clone() of an inference tensor outside inference mode gives a normal tensor, usable as a training input
    with torch.inference_mode(False):
        return torch.stack(inputs).clone(), torch.stack(outputs).clone()


def _own_trainable(layer: nn.Module, teacher: PretrainedLM) -> list[nn.Parameter]:
    """The layer's projection weights (and biases), and its learned sink logits if it has them, each replaced by a
    copy the student alone holds, set to learn."""
    taken = {p.untyped_storage().data_ptr() for p in teacher.parameters()}
    parameters = []
    for name in TRAINED[type(layer)]:
        module = getattr(layer, name, None)
        if not isinstance(module, nn.Linear):
            continue
        for attribute in ("weight", "bias"):
            value = getattr(module, attribute)
            if value is None:
                continue
            assert not value.is_meta
            with torch.inference_mode(False):
                own = nn.Parameter(value.detach().clone(), requires_grad=True)
            assert own.untyped_storage().data_ptr() not in taken
            setattr(module, attribute, own)
            parameters.append(own)
    sinks = getattr(layer, "sinks", None)
    if isinstance(sinks, nn.Parameter):  # a learned sink logit per head (gpt-oss's; with_window(learned_sinks=True))
        with torch.inference_mode(False):
            layer.sinks = nn.Parameter(sinks.detach().clone(), requires_grad=True)
        layer.sinks.is_sink_logit = True  # type: ignore[attr-defined]  # trained at SINK_LR_SCALE x lr
        parameters.append(layer.sinks)
    return parameters


def _relative_error(out: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
    return (out - target).pow(2).sum() / target.pow(2).sum().clamp(min=1e-30)


def _losses(layers: list[nn.Module], x: torch.Tensor, y: torch.Tensor, *, grad: bool) -> list[float]:
    with torch.set_grad_enabled(grad), torch.inference_mode(False):
        return [float(_relative_error(layer(x[index][None])[0][0], y[index])) for index, layer in enumerate(layers)]


def _layerwise_step(
    learner: _Learner,
    recording: _Recording,
    chunk: int,
    lr: float,
    optimizer: torch.optim.Optimizer | None,
) -> list[float]:
    """heal's step on one window: every trained layer's loss, and the exact layers' first loss repeated."""
    losses = _train_step(learner.layers, learner.trained, *recording.window(chunk), optimizer, lr)
    for index in learner.frozen:
        losses[index] = learner.initial[index]
    return losses


def _train_step(
    layers: list[nn.Module],
    trained: list[int],
    x: torch.Tensor,
    y: torch.Tensor,
    optimizer: torch.optim.Optimizer | None,
    lr: float,
) -> list[float]:
    """One window through every trained layer, one Adam step on the sum of their losses; the per-layer losses (before
    the step; 0.0 for layers not trained, filled in by the caller)."""
    losses = [0.0] * len(layers)
    if optimizer is None:
        return losses
    for group in optimizer.param_groups:
        group["lr"] = lr * group["lr_scale"]
    optimizer.zero_grad(set_to_none=True)
    with torch.enable_grad():
        for index in trained:
            loss = _relative_error(layers[index](x[index][None])[0][0], y[index])
            loss.backward()  # layer by layer: each graph is freed before the next one is built
            losses[index] = float(loss.detach())
    optimizer.step()
    return losses
