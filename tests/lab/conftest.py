"""The trained model, a short calibration and a short evaluation slice of the lab's own texts, once per session."""

from __future__ import annotations

import pytest
import torch

from attn_core.pretrained import ModelNotInstalled, load_pretrained
from attn_core.pretrained.convert import calibrate
from explorer.probes.lab import EVAL_TOKENS, reference_text, split_tokens

SHORT_EVAL_TOKENS = 256  # a slice of the lab's evaluation text: enough to order the ranks, quick on 2 cores
SHORT_CALIBRATION_TOKENS = 512
SHORT_TRAINING_TOKENS = 256  # healing tests: a few small windows, enough for a loss to fall


@pytest.fixture(scope="session")
def lm():
    torch.set_num_threads(1)  # on a shared 2-core machine one thread per process is faster than two
    try:
        return load_pretrained()
    except ModelNotInstalled as missing:
        pytest.skip(str(missing))


@pytest.fixture(scope="session")
def lab_ids(lm):
    return split_tokens(lm)


@pytest.fixture(scope="session")
def lm64():
    """A float64 copy of the trained model (its own weights: .double() on the shared one would change it)."""
    try:
        return load_pretrained().double()
    except ModelNotInstalled as missing:
        pytest.skip(str(missing))


@pytest.fixture(scope="session")
def train_text(lm):
    """Training text for healing: tokens right after the lab's evaluation tokens (disjoint from evaluation, and from
    calibration, which is the text's end)."""
    ids = lm.encode(reference_text())
    return lm.decode(ids[EVAL_TOKENS : EVAL_TOKENS + SHORT_TRAINING_TOKENS])


@pytest.fixture(scope="session")
def short_eval_ids(lab_ids):
    return lab_ids[0][:SHORT_EVAL_TOKENS]


@pytest.fixture(scope="session")
def calibration(lm, lab_ids):
    return calibrate(lm, lm.decode(lab_ids[1]), max_tokens=SHORT_CALIBRATION_TOKENS, window=SHORT_CALIBRATION_TOKENS)


@pytest.fixture(scope="session")
def prompt_ids(lm):
    return lm.encode("Attention lets every token look at the tokens before it and decide what matters most.")
