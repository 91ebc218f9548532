"""Healing's second stage (attn_core.pretrained.heal_end_to_end): the teacher untouched bit for bit, only attention
projections learn, the KL it reports is the textbook formula's, it falls, runs repeat, an exact conversion stays
exact. Kept fast: a few steps over small windows of a short training text."""

from __future__ import annotations

import pytest
import torch

from attn_core.pretrained import HealReport, convert_attention, heal_end_to_end
from attn_core.pretrained.heal import EXACT_LOSS

pytestmark = pytest.mark.slow  # `make test-fast` leaves it out (pytest.ini)

WINDOW = 64  # 256 training tokens: 4 windows an epoch


def state(model):
    return {name: value.detach().clone() for name, value in model.state_dict().items()}


def logits_of(model, ids):
    with torch.inference_mode():
        return model(torch.tensor([ids]))[0][0]


def kl_by_the_formula(teacher, student, ids):
    """KL(p_teacher || p_student) per position, averaged, in float64: sum_v p (log p - log q)."""
    p = torch.log_softmax(logits_of(teacher, ids).double(), dim=-1)
    q = torch.log_softmax(logits_of(student, ids).double(), dim=-1)
    return float((p.exp() * (p - q)).sum(dim=-1).mean())


@pytest.fixture(scope="module")
def mean_pooled(lm):
    return convert_attention(lm, "gqa", n_kv_heads=1, method="mean").model


def test_the_teacher_is_untouched_and_only_attention_learns(lm, mean_pooled, train_text):
    teacher_before, student_before = state(lm), state(mean_pooled)
    ids = lm.encode(train_text)
    kl_before = [kl_by_the_formula(lm, mean_pooled, ids[i : i + WINDOW]) for i in range(0, len(ids), WINDOW)]
    report = heal_end_to_end(mean_pooled, lm, train_text, steps=8, window=WINDOW, lr=1e-4)
    assert isinstance(report, HealReport)
    assert all(torch.equal(value, lm.state_dict()[name]) for name, value in teacher_before.items())
    after = mean_pooled.state_dict()
    moved = {name for name, value in student_before.items() if not torch.equal(value, after[name])}
    assert moved, "nothing learnt"
    assert all(".self_attn." in name and name.rsplit(".", 2)[-2].endswith("_proj") for name in moved), moved
    assert not any(p.requires_grad for p in mean_pooled.parameters())
    assert report.steps == len(report.losses) == 8
    assert all(len(step) == 1 for step in report.losses)
    # two epochs over the four windows: the KL on every one of them is lower than before
    kl_after = [kl_by_the_formula(lm, mean_pooled, ids[i : i + WINDOW]) for i in range(0, len(ids), WINDOW)]
    assert all(after < 0.95 * before for before, after in zip(kl_before, kl_after, strict=True)), (kl_before, kl_after)
    assert report.frozen_layers == []


def test_the_reported_kl_is_the_formulas(lm, train_text):
    student = convert_attention(lm, "gqa", n_kv_heads=1, method="mean").model
    ids = lm.encode(train_text)
    first_window = torch.randperm(4, generator=torch.Generator().manual_seed(5)).tolist()[0]
    chunk = ids[first_window * WINDOW : (first_window + 1) * WINDOW]
    expected = kl_by_the_formula(lm, student, chunk)
    report = heal_end_to_end(student, lm, train_text, steps=1, window=WINDOW, seed=5)
    assert report.initial_losses[0] == pytest.approx(expected, rel=1e-4)
    assert report.losses[0][0] == pytest.approx(expected, rel=1e-4)  # the first step's, before its update


def test_same_seed_and_steps_give_the_same_weights(lm, train_text):
    def healed(seed):
        student = convert_attention(lm, "gqa", n_kv_heads=1, method="mean").model
        heal_end_to_end(student, lm, train_text, steps=2, window=WINDOW, lr=1e-3, seed=seed)
        return state(student)

    first, again, other = healed(1), healed(1), healed(2)
    assert all(torch.equal(first[name], again[name]) for name in first)
    assert not all(torch.equal(first[name], other[name]) for name in first)


def test_an_exact_conversion_stays_exact(lm, prompt_ids, train_text):
    mha = convert_attention(lm, "mha").model
    report = heal_end_to_end(mha, lm, train_text, steps=2, window=WINDOW, lr=1e-3)
    assert report.initial_losses[0] < EXACT_LOSS
    assert report.frozen_layers == list(range(lm.config.n_layers))
    assert (logits_of(mha, prompt_ids) - logits_of(lm, prompt_ids)).abs().max() <= 1e-5


def test_bad_arguments_are_refused_clearly(lm, mean_pooled, train_text):
    with pytest.raises(ValueError, match="budget"):
        heal_end_to_end(mean_pooled, lm, train_text)
    with pytest.raises(ValueError, match="conversion of the teacher"):
        heal_end_to_end(lm, lm, train_text, steps=1)
    with pytest.raises(ValueError, match="at least two tokens"):
        heal_end_to_end(mean_pooled, lm, "", steps=1)
