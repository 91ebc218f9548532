"""The KV cache page's sentence on each design's cache says what its measured bytes did (issue 47: a quantised cache
that fell back once and grew on, and V4's compressed cache that grows in a zigzag, were both said to "drop back to
<the first step's bytes> again and again" and "never hold more than" the last step's): where the bytes fall back
while they grow, the sentence says when (from the design's own group sizes, not the trace) and why, in both
languages."""

from __future__ import annotations

from functools import cache

import pytest

from explorer import i18n
from explorer.i18n import format_bytes
from explorer.kinds.registry import design
from explorer.kv_cache.text import design_finding
from explorer.probes.kv_cache import DesignTrace, design_trace
from explorer.settings import DESIGNS, Settings

DEFAULT = Settings(designs=DESIGNS)  # the sidebar's defaults: a group of 32 quantised keys, V4's rate 4
PROMPT, STEPS = 12, 40  # the page's defaults


@cache
def traced(name: str) -> DesignTrace:
    return design_trace(
        design(DEFAULT, name), prompt_len=PROMPT, steps=STEPS, batch=1, seed=0, storage_dtype="bfloat16"
    )


def said(name: str, lang: str = "en") -> str:
    with i18n.speaking(lang):
        return design_finding(name, traced(name), STEPS, None, design(DEFAULT, name))


def test_the_quantised_cache_falls_back_once_when_its_first_group_of_keys_is_quantised():
    trace, bits = traced("quantised"), design(DEFAULT, "quantised").bits
    # KIVI's keys per channel are quantised a whole group at a time: the step whose token completes the first group
    step = bits.group_size - PROMPT
    assert [i for i in range(1, STEPS + 1) if trace.nbytes[i] < trace.nbytes[i - 1]] == [step]
    sentence = said("quantised")
    assert f"grows from {format_bytes(trace.nbytes[0])} to {format_bytes(trace.nbytes[-1])}" in sentence
    assert f"falling back at step {step}:" in sentence
    assert f"{bits.group_size} tokens at a time" in sentence
    assert "never holds more" not in sentence
    assert "again and again" not in sentence


def test_v4_s_compressed_cache_falls_back_every_rate_steps_and_says_its_groups_are_pooled():
    rate = design(DEFAULT, "compressed").config.compress_rate
    trace = traced("compressed")
    falls = [i for i in range(1, STEPS + 1) if trace.nbytes[i] < trace.nbytes[i - 1]]
    assert all((PROMPT + i) % rate == 0 for i in falls)  # the token that completes a group of `rate`
    sentence = said("compressed")
    assert f"falling back every {rate} steps:" in sentence
    assert f"an unfinished group of {rate} wait" in sentence
    assert "never holds more" not in sentence


@pytest.mark.parametrize("name", ["quantised", "compressed"])
def test_the_chinese_sentence_says_the_same_numbers(name):
    english, chinese = said(name, "en"), said(name, "zh")
    assert chinese != english
    for figure in (format_bytes(traced(name).nbytes[0]), format_bytes(traced(name).nbytes[-1])):
        assert figure in chinese
