"""A healed point kept on disk: asked again (a restarted server, or another one sharing the cache folder) it is read
back without training, bit for bit the same weights and the same answer; pressed again on the same server it is not
healed twice; and a store file that is cut short, not a torch file, or made for other layers is healed again (and
rewritten) rather than failing with a traceback or leaving a half-loaded model.

One real heal for the module (one training step); each test works on its own copy of the store it wrote."""

from __future__ import annotations

import functools
import shutil
import threading
from types import SimpleNamespace

import pytest
import torch

from explorer.lab import computed as cached
from explorer.lab.link import heal_button_key
from explorer.probes import healing
from explorer.probes.lab import POINTS_BY_KEY, answer, convert_point
from tests.app.helpers import no_exception, open_page

pytestmark = pytest.mark.slow  # `make test-fast` leaves it out (pytest.ini)

KEY = "mqa-mean"  # needs no calibration: the quickest conversion to set up
SECONDS = 8.0  # the recipe's budget, which names the stored file; the heal itself stops after STEPS
STEPS = 1  # enough to move the weights away from the plain conversion's
EVAL_TOKENS = 64  # scored before and after each heal: what is stored and read back is under test, not the figure
HEAL_LIMIT = 600.0  # s, for a whole heal on a loaded 2-core machine
PROMPT = "What does a key-value cache store?"


def attention_weights(model) -> list[torch.Tensor]:
    return [p.detach().clone() for layer in model.decoder_layers for p in layer.self_attn.parameters()]


def wait_for_heals() -> None:
    for thread in [t for t in threading.enumerate() if t.name.startswith("heal-")]:
        thread.join(HEAL_LIMIT)
        assert not thread.is_alive(), f"{thread.name} still runs after {HEAL_LIMIT:.0f} s"


def forget_heals() -> None:
    """As a restarted server: nothing healed in memory, the store on disk as it was."""
    cached._heals.clear()
    cached._healed.clear()


def heal_once(key: str) -> healing.HealProgress:
    progress = cached.start_heal(key)
    wait_for_heals()
    assert progress.phase == "done", progress.error
    return progress


@pytest.fixture(scope="module")
def stored(lm, tmp_path_factory):
    """One real heal, stored under a folder of its own: (that folder, its progress, its weights, its answer)."""
    root = tmp_path_factory.mktemp("store")
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(healing, "LIVE_SECONDS", SECONDS)
        patch.setattr(healing, "LIVE_EVAL_TOKENS", EVAL_TOKENS)
        patch.setattr(healing, "heal", functools.partial(healing.heal, steps=STEPS))
        patch.setattr(healing, "cache_root", lambda: root)
        forget_heals()
        progress = heal_once(KEY)
        healed_model = cached.healed(KEY)
        result = root, progress, attention_weights(healed_model), answer(healed_model, PROMPT)
        forget_heals()
        path = healing.stored_path(POINTS_BY_KEY[KEY], SECONDS, root)
    assert not progress.from_disk
    assert len(progress.step_losses) == STEPS
    # the step moved the weights: reading them back bit for bit says something
    plain = attention_weights(convert_point(lm, POINTS_BY_KEY[KEY], None))
    assert not all(torch.equal(a, b) for a, b in zip(plain, result[2], strict=True))
    (file,) = (root / "healed").iterdir()
    assert file == path
    return result


@pytest.fixture
def restarted(stored, monkeypatch, tmp_path):
    """A fresh server over a copy of the store; training counted in `trained` (and refused unless allowed)."""
    shutil.copytree(stored[0] / "healed", tmp_path / "healed")
    monkeypatch.setattr(healing, "LIVE_SECONDS", SECONDS)
    monkeypatch.setattr(healing, "LIVE_EVAL_TOKENS", EVAL_TOKENS)
    monkeypatch.setattr(healing, "cache_root", lambda: tmp_path)
    trained: list[str] = []

    def refused(*args, **kwargs):
        trained.append("heal")
        raise AssertionError("trained again instead of reading the store")

    monkeypatch.setattr(healing, "heal", refused)
    forget_heals()
    yield SimpleNamespace(
        path=healing.stored_path(POINTS_BY_KEY[KEY], SECONDS, tmp_path), trained=trained, monkeypatch=monkeypatch
    )
    wait_for_heals()
    forget_heals()


def test_a_stored_heal_is_read_back_without_training(restarted, stored):
    _root, first, weights, first_answer = stored
    progress = heal_once(KEY)
    assert restarted.trained == []
    assert progress.from_disk
    assert progress.step_losses == first.step_losses
    assert (progress.perplexity_before, progress.perplexity_after) == (first.perplexity_before, first.perplexity_after)
    reloaded = attention_weights(cached.healed(KEY))
    assert len(reloaded) == len(weights)
    assert all(torch.equal(a, b) for a, b in zip(weights, reloaded, strict=True))
    assert answer(cached.healed(KEY), PROMPT) == first_answer


def test_pressing_again_for_a_healed_point_does_not_heal_again(restarted):
    progress = heal_once(KEY)
    model = cached.healed(KEY)
    assert cached.start_heal(KEY) is progress  # no new heal registered, no thread started
    assert not [t for t in threading.enumerate() if t.name.startswith("heal-")]
    assert cached.healed(KEY) is model
    assert restarted.trained == []
    # The page offers no button for it any more: it shows the result, read from the store.
    at = open_page("lab", {"lab_model": KEY})
    no_exception(at)
    assert not [b for b in at.button if b.key == heal_button_key(KEY)]
    assert any("kept on disk" in message.value for message in at.success)


def cut_short(path) -> None:
    path.write_bytes(path.read_bytes()[: path.stat().st_size // 2])


def not_torch(path) -> None:
    path.write_bytes(b"not a checkpoint")


def other_layers(path) -> None:
    """A whole file, but for another conversion: one layer's tensors of another shape."""
    stored = torch.load(path, weights_only=True)
    name, tensor = next(iter(stored["layers"][0].items()))
    stored["layers"][0][name] = torch.zeros(tensor.shape[0] + 1, *tensor.shape[1:])
    torch.save(stored, path)


def left_partial(path) -> None:
    """A server stopped while saving: the .partial file it was writing, and no store file."""
    cut_short(path)
    path.replace(path.with_suffix(".partial"))


@pytest.mark.parametrize("damage", [cut_short, not_torch, other_layers, left_partial])
def test_a_damaged_store_is_healed_again_and_rewritten(restarted, lm, damage):
    damage(restarted.path)

    # Healing again is what is under test, not the training: a stand-in that leaves the conversion as it is.
    def untrained(student, teacher, text, **kwargs):
        restarted.trained.append("heal")
        return SimpleNamespace(initial_losses=[1.0], seconds=0.0, tokens=0)

    restarted.monkeypatch.setattr(healing, "heal", untrained)
    progress = heal_once(KEY)
    assert restarted.trained == ["heal"]
    assert not progress.from_disk
    # nothing of the damaged file was loaded: the model is the plain conversion
    plain = attention_weights(convert_point(lm, POINTS_BY_KEY[KEY], None))
    assert all(torch.equal(a, b) for a, b in zip(plain, attention_weights(cached.healed(KEY)), strict=True))
    # and the store is whole again: the next server reads it back
    forget_heals()
    again = heal_once(KEY)
    assert again.from_disk
    assert restarted.trained == ["heal"]
    assert again.perplexity_after == progress.perplexity_after
