"""The stored healing table (assets/heal_table.json, written by benchmarks/heal.py) against a fresh heal: its inputs'
hashes, its arithmetic, and its recipe re-run for its first steps give the per-layer losses it stored."""

from __future__ import annotations

import math

import pytest

from attn_core.pretrained import heal
from explorer.lab import stored as lab_stored
from explorer.probes.lab import POINTS_BY_KEY, convert_point, reference_text, text_sha256

pytestmark = pytest.mark.slow  # records the teacher over the whole training text (`make test-fast` leaves it out)

CHECKED_KEY = "mqa-mean"  # its conversion needs no calibration: the cheapest to rebuild


class Stop(Exception):
    """Raised from on_step to end a heal after the steps the table stored."""


@pytest.fixture(scope="module")
def table():
    table = lab_stored.load_heal_table()
    if table["evaluation"]["text_sha256"] != text_sha256(reference_text()):
        pytest.skip("this Python's pydoc_data text is not the one the table was measured on")
    return table


def test_every_row_states_its_gap_and_ratio_from_its_own_perplexities(table):
    for row in table["rows"]:
        before, after, original = row["perplexity_before"], row["perplexity_after"], row["perplexity_original"]
        closed = (math.log(before) - math.log(after)) / (math.log(before) - math.log(original))
        assert row["gap_closed"] == pytest.approx(closed, rel=1e-12), row["key"]
        assert row["times_original_after"] == pytest.approx(after / original, rel=1e-12), row["key"]
        assert row["recipe"]["steps_taken"] * row["recipe"]["window"] >= row["recipe"]["tokens_seen"]


def test_a_stored_recipe_reproduces_its_first_steps(lm, table):
    rows = {row["key"]: row for row in table["rows"]}
    if CHECKED_KEY not in rows or "losses_first_steps" not in rows[CHECKED_KEY]:
        pytest.fail(f"{CHECKED_KEY} has no stored first steps: run `python benchmarks/heal.py --points {CHECKED_KEY}`")
    row = rows[CHECKED_KEY]
    recipe = row["recipe"]
    ids = lm.encode(reference_text())
    start, end = (int(part) for part in recipe["which"].removeprefix("tokens ").split(" ")[0].split(".."))
    train_text = lm.decode(ids[start : end + 1])
    assert text_sha256(train_text) == recipe["train_text_sha256"]

    student = convert_point(lm, POINTS_BY_KEY[CHECKED_KEY], None)
    expected = row["losses_first_steps"]
    seen: list[list[float]] = []

    def record(step: int, losses: list[float], _seconds: float) -> None:
        seen.append(losses)
        if step == len(expected):
            raise Stop

    with pytest.raises(Stop):
        heal(
            student,
            lm,
            train_text,
            steps=recipe["stages"]["layerwise"]["steps"],  # the first stage: its cosine spans its own steps
            lr=recipe["lr"],
            schedule=recipe["schedule"],
            window=recipe["window"],
            seed=recipe["seed"],
            on_step=record,
        )
    for step, (mine, stored) in enumerate(zip(seen, expected, strict=True), start=1):
        assert mine == pytest.approx(stored, rel=1e-4), f"step {step}"
