"""What a broken cache writes: the page continues one passage with the original, a window without and with a sink and
a 2-bit cache, each the model's own greedy generate (recomputed here), and says how long each agrees."""

from __future__ import annotations

import html
import re

import pytest

from attn_core.pretrained import with_cache_bits, with_window
from explorer.lab import link as lab_link
from explorer.probes import lab_axes
from tests.app.helpers import no_exception, open_page

pytestmark = pytest.mark.slow  # four models continue a passage of 384 tokens


def test_a_topic_that_is_not_offered_is_refused_by_name(lm):
    with pytest.raises(ValueError, match="topic='nope'"):
        lab_axes.passage_ids(lm, "nope")


def test_each_model_continues_the_passage_as_its_own_generate_does(lm):
    at = open_page("lab", {lab_link.PASSAGE.name: "for"})
    at.toggle(key=lab_link.CONTINUE.key).set_value(True).run()
    no_exception(at, nor_error=True)
    ids = lab_axes.passage_ids(lm, "for")
    assert len(ids) == lab_axes.PASSAGE_TOKENS
    models = {
        "original": lm,
        "w128-s0-every": with_window(lm, 128, 0),
        "w128-s1-every": with_window(lm, 128, 1),
        "b2-token-r0": with_cache_bits(lm, bits=2, group_size=32, residual=0, keys="token"),
    }
    written = {
        key: lm.token_strings(model.generate(ids, lab_axes.CONTINUATION_TOKENS, stop_at_eos=False))
        for key, model in models.items()
    }
    blocks = {
        match.group(1): [html.unescape(chip) for chip in re.findall(r"<span[^>]*>(.*?)</span>", body)]
        for body in (h.proto.body for h in at.get("html"))
        if (match := re.search(r'data-of="continuation-([^"]+)"', body))
    }
    assert blocks == written
    captions = " ".join(c.value for c in at.caption)
    for key in ("w128-s0-every", "w128-s1-every", "b2-token-r0"):
        agree = lab_axes.agreeing_prefix(written["original"], written[key])
        if agree < len(written["original"]):
            assert f"first {agree} of {len(written['original'])} tokens" in captions
