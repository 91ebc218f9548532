"""Heal a window live, on the lab page: the windowed model's own button starts the lab's live heal for it (the same
machinery as a conversion's), and the perplexities it reports are the healed windowed model's own, recomputed here."""

from __future__ import annotations

import pytest

from attn_core.pretrained import WindowedLM
from explorer.lab import computed as cached
from explorer.lab.link import heal_button_key
from explorer.probes import healing
from explorer.probes.lab import WINDOW_POINTS, perplexity_of, reference_text, window_nll_sums
from tests.app.helpers import no_exception, open_page
from tests.lab.test_live_heal import fresh_heals, teacher_fingerprint, wait_until_done  # noqa: F401 (a fixture)

pytestmark = pytest.mark.slow  # trains for SECONDS and scores a window three times

KEY = WINDOW_POINTS[0].key


def test_the_window_heal_button_heals_the_windowed_model_and_reports_its_own_numbers(lm, fresh_heals):  # noqa: F811
    before = teacher_fingerprint(lm)
    at = open_page("lab")
    at.button(key=heal_button_key(KEY)).click().run()
    no_exception(at)
    progress = wait_until_done(KEY)
    at.run()
    no_exception(at, nor_error=True)
    healed = cached.healed(KEY)
    assert isinstance(healed, WindowedLM)
    assert healed.window_options.window == 128
    assert healed.window_options.learned_sinks
    eval_ids = lm.encode(reference_text())[: healing.LIVE_EVAL_TOKENS]
    assert perplexity_of(window_nll_sums(healed, eval_ids)) == pytest.approx(progress.perplexity_after)
    assert progress.perplexity_after < progress.perplexity_before
    successes = " ".join(s.value for s in at.success)
    assert f"{progress.perplexity_after:,.2f} healed" in successes
    assert teacher_fingerprint(lm) == before  # the original model is untouched
