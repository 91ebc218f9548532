"""Healing a conversion (attn_core.pretrained.heal): the teacher untouched bit for bit, the student's trained weights
its own, the loss falling, runs repeatable, the healed model a conversion like any other (its cache, its absorbed
decode), an exact conversion left exact, and bad arguments refused with a clear message. Kept fast: a few steps over
small windows of a short training text."""

from __future__ import annotations

import time

import pytest
import torch

from attn_core.pretrained import HealReport, convert_attention, heal
from attn_core.pretrained.heal import EXACT_LOSS

pytestmark = pytest.mark.slow  # `make test-fast` leaves it out (pytest.ini)

WINDOW = 64  # training tokens per step in these tests (256 tokens: 4 windows an epoch)


def logits_of(model, ids):
    with torch.inference_mode():
        return model(torch.tensor([ids]))[0][0]


def attention_state(model):
    return {name: value.detach().clone() for name, value in model.state_dict().items() if ".self_attn." in name}


def teacher_storages(teacher):
    return {tensor.untyped_storage().data_ptr() for tensor in teacher.state_dict().values()}


@pytest.fixture(scope="session")
def healed(lm, calibration, train_text):
    """An MLA conversion healed for two epochs, with the teacher's every tensor copied before, and the conversion's
    attention weights before healing."""
    teacher_before = {name: value.clone() for name, value in lm.state_dict().items()}
    mla = convert_attention(lm, "mla", kv_lora_rank=96, qk_rope_head_dim=32, calibration=calibration).model
    converted = attention_state(mla)
    # The conversion itself shares a tensor with the teacher (o_proj is kept as it is): healing must not write there.
    attention = {p.untyped_storage().data_ptr() for layer in mla.decoder_layers for p in layer.self_attn.parameters()}
    assert attention & teacher_storages(lm)
    seen = []  # per step: its number, the seconds on_step was given, the seconds since heal() was called
    begun = time.perf_counter()

    def on_step(step: int, _losses: list[float], seconds: float) -> None:
        seen.append((step, seconds, time.perf_counter() - begun))

    report = heal(mla, lm, train_text, steps=8, window=WINDOW, on_step=on_step)
    return mla, report, teacher_before, converted, seen


def test_the_teacher_is_bit_identical_after_healing(lm, healed):
    mla, _report, teacher_before, converted, _seen = healed
    after = lm.state_dict()
    assert set(after) == set(teacher_before)
    changed = [name for name, value in teacher_before.items() if not torch.equal(value, after[name])]
    assert not changed, changed
    # healing did write: every trained projection moved, into tensors the teacher does not hold
    now = attention_state(mla)
    moved = [name for name in converted if not torch.equal(converted[name], now[name])]
    assert {name.rsplit(".", 2)[-2] for name in moved} == {"q_proj", "kv_a_proj_with_mqa", "kv_b_proj", "o_proj"}
    own = {p.untyped_storage().data_ptr() for layer in mla.decoder_layers for p in layer.self_attn.parameters()}
    assert not own & teacher_storages(lm)
    assert not any(p.requires_grad for p in mla.parameters())


def test_each_step_is_told_the_seconds_of_training_the_report_counts(healed):
    """on_step gets heal's training clock (the live heal's progress line shows it beside the report's final seconds):
    rising, never past the report's, the teacher's recording off it."""
    _mla, report, _before, _converted, seen = healed
    clock = [seconds for _step, seconds, _wall in seen]
    assert clock[0] > 0
    assert clock == sorted(clock)
    assert clock[-1] <= report.seconds
    # by the last step every window had been recorded (two epochs over four): that time is on the wall, not the clock
    assert report.capture_seconds > 0
    assert seen[-1][2] >= clock[-1] + report.capture_seconds


def test_the_report_and_the_loss_falls(lm, healed, train_text):
    _mla, report, _before, _converted, seen = healed
    assert isinstance(report, HealReport)
    assert report.steps == 8
    assert [step for step, _seconds, _wall in seen] == list(range(1, 9))
    assert report.text_tokens == len(lm.encode(train_text))
    assert report.tokens == sum(min(WINDOW, report.text_tokens - start) for start in range(0, 256, WINDOW)) * 2
    assert len(report.losses) == 8
    assert all(len(step) == lm.config.n_layers for step in report.losses)
    assert report.seconds > 0
    assert report.frozen_layers == []
    # two epochs over the same four windows (in another order): the second's loss is lower, over all layers and in
    # most of them one by one
    first, second = report.losses[:4], report.losses[4:]
    assert sum(map(sum, second)) < 0.9 * sum(map(sum, first))
    fell = [sum(step[layer] for step in second) < sum(step[layer] for step in first) for layer in range(30)]
    assert sum(fell) >= 27, fell


def test_the_healed_cache_holds_what_the_conversions_did(lm, calibration, healed, prompt_ids):
    mla, *_ = healed
    unhealed = convert_attention(lm, "mla", kv_lora_rank=96, qk_rope_head_dim=32, calibration=calibration).model
    assert mla.kv_cache_bytes_per_token() == unhealed.kv_cache_bytes_per_token() == (96 + 32) * 4
    cache = mla.new_cache()
    with torch.inference_mode():
        mla(torch.tensor([prompt_ids]), cache)
    assert cache.nbytes == len(prompt_ids) * lm.config.n_layers * (96 + 32) * 4
    assert len(mla.generate(prompt_ids, max_new_tokens=4, stop_at_eos=False)) == 4


def test_healed_cached_absorbed_decode_equals_a_full_recompute(lm64, calibration, prompt_ids, train_text):
    """As for conversions (test_convert), in float64: healing keeps the model a real MLA, whose token-by-token
    absorbed decode through its latent cache gives the logits of one full pass."""
    mla = convert_attention(lm64, "mla", kv_lora_rank=128, qk_rope_head_dim=32, calibration=calibration).model
    before = logits_of(mla, prompt_ids)
    heal(mla, lm64, train_text, steps=3, window=WINDOW, lr=1e-3)
    full = logits_of(mla, prompt_ids)
    assert (full - before).abs().max() > 1e-2  # healing changed the model
    ids = torch.tensor([prompt_ids])
    cache = mla.new_cache()
    with torch.inference_mode():
        steps = [mla(ids[:, :4], cache)[0][0]]
        for i in range(4, ids.shape[1]):
            steps.append(mla(ids[:, i : i + 1], cache)[0][0])
    assert (torch.cat(steps) - full).abs().max() <= 1e-4


def test_same_seed_and_steps_give_the_same_weights(lm, train_text):
    def healed_weights(seed):
        mqa = convert_attention(lm, "gqa", n_kv_heads=1, method="mean").model
        heal(mqa, lm, train_text, steps=3, window=WINDOW, lr=1e-3, seed=seed)
        return attention_state(mqa)

    first, again, other = healed_weights(1), healed_weights(1), healed_weights(2)
    assert all(torch.equal(first[name], again[name]) for name in first)
    assert not all(torch.equal(first[name], other[name]) for name in first)  # the seed orders the windows


def test_a_step_budget_records_the_teacher_only_on_the_windows_its_steps_take(lm, train_text):
    """The teacher runs over a window the first time a step takes it: one step needs the first window (the losses
    before training) and the step's own, not all four."""
    recorded = []
    hook = lm.decoder_layers[0].register_forward_hook(lambda _layer, args, _out: recorded.append(args[0].shape[1]))
    try:
        mqa = convert_attention(lm, "gqa", n_kv_heads=1, method="mean").model
        report = heal(mqa, lm, train_text, steps=1, window=WINDOW, seed=3)
    finally:
        hook.remove()
    first = int(torch.randperm(4, generator=torch.Generator().manual_seed(3))[0])
    assert len(recorded) == len({0, first}) < 4
    assert recorded == [WINDOW] * len(recorded)
    assert report.steps == 1


def test_healing_the_exact_mha_conversion_keeps_the_logits(lm, prompt_ids, train_text):
    mha = convert_attention(lm, "mha").model
    report = heal(mha, lm, train_text, steps=3, window=WINDOW, lr=1e-3)
    assert report.frozen_layers == list(range(lm.config.n_layers))
    assert max(report.initial_losses) < EXACT_LOSS
    assert (logits_of(mha, prompt_ids) - logits_of(lm, prompt_ids)).abs().max() <= 1e-5


def test_bad_arguments_are_refused_clearly(lm, lm64, train_text):
    mqa = convert_attention(lm, "gqa", n_kv_heads=1, method="mean").model
    with pytest.raises(ValueError, match="budget"):
        heal(mqa, lm, train_text)
    with pytest.raises(ValueError, match="at least two tokens"):
        heal(mqa, lm, "", steps=1)
    with pytest.raises(TypeError, match="text must be a str"):
        heal(mqa, lm, [1, 2, 3], steps=1)
    with pytest.raises(ValueError, match="conversion of the teacher"):
        heal(lm, lm, train_text, steps=1)
    with pytest.raises(ValueError, match="not a conversion of this teacher"):
        heal(convert_attention(lm64, "gqa", n_kv_heads=1, method="mean").model, lm, train_text, steps=1)
    with pytest.raises(TypeError, match="PretrainedLM"):
        heal(mqa, "lm", train_text, steps=1)
    with pytest.raises(ValueError, match="steps=0"):
        heal(mqa, lm, train_text, steps=0)
    with pytest.raises(TypeError, match="steps must be an int"):
        heal(mqa, lm, train_text, steps=2.5)
    with pytest.raises(ValueError, match="seconds"):
        heal(mqa, lm, train_text, seconds=-1)
    with pytest.raises(ValueError, match="schedule"):
        heal(mqa, lm, train_text, steps=1, schedule="linear")
